"""The Check yourself tab: the chapter's questions one at a time, each answer scored and explained."""
