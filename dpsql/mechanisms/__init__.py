"""Privacy mechanisms and the exact samplers and random sources they draw noise from."""
