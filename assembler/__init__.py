"""assembler package."""
