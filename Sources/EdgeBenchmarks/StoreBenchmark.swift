import EdgeStore
