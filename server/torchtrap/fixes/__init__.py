"""Edit builders shared by rules, and applying edits to text."""
