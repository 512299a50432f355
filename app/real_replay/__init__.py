"""The real replay section: both schedules through a real model, predicted and measured side by side."""
