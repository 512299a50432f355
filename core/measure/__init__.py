"""What is measured: window metrics, serving figures (TTFT, ITL, goodput), the batch-size sweep, the lineup."""
