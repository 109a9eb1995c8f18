def gather(x, idx):
    return [x[i] for i in idx]
