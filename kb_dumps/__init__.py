"""kb_dumps package."""
