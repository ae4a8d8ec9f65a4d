"""eot package."""
