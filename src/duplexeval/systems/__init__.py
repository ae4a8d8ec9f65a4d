"""systems package."""
