return read(key)
