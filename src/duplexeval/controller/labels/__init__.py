"""Labels: frame truth and events from two-channel conversations (manifests, FDB CANDOR, espeak-ng conversations)."""
