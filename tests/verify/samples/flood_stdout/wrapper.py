def flood(total_mb):
    line = "y" * 1023 + "\n"
    chunk = line * 1024
    for _ in range(total_mb):
        sys.stdout.write(chunk)
    sys.stdout.flush()
