"""The Simulator tab: the state, its runs, the renderer's data, the chapter's story and the batch at the cursor."""
