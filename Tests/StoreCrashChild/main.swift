import EdgeStore
print("placeholder")
