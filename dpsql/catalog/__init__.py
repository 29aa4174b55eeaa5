"""The policy: what may be queried, with which bounds, under which budget."""
