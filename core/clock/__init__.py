"""What a forward pass costs: the unit step, a roofline, a measured profile, and named accelerators."""
