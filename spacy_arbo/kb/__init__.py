"""Knowledge-base layer: entity records, readers, the entity store, and search indexes."""
