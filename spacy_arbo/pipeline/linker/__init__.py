"""The linker's internals: what it reads, decides, knows before encoding and saves."""
