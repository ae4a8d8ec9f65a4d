"""Data format: the clip data folder, the evaluation policy file and the streaming controller interface."""
