"""The graphs `clustering.partition` can cut, apart from the cutting (scipy): the linker's
settings check them without importing it."""

GRAPHS = ("directed", "undirected")
