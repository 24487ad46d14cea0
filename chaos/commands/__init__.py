"""One module per ``lockchaos`` sub-command (registered in ``chaos.cli``)."""
