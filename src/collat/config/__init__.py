"""What a config may say beyond its schema: checks across keys, and the names a machine allows."""
