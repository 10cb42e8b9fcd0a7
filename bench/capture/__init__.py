"""Capture benchmark: hand labels of real sessions and the learned sentence scorer."""
