"""What several components share: the links they write, the neighbours they read, the KB's version."""
