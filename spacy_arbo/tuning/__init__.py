"""Every setting chosen on a dev set, one module per thing chosen, all by one rule (`rule.py`)."""
