result = run_add(1, 2)
print(result)
