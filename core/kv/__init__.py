"""The KV block manager the scheduler asks: a pool of fixed-size blocks, paged or contiguous."""
