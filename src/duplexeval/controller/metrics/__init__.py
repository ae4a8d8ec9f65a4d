"""Metrics: the offline replay into events, event and frame metrics, the evaluate report, the paired comparison."""
