def escape():
    errors = []
    for path in ["@OUTSIDE@/escaped.txt", "/tmp/kforge-escape-@NONCE@.txt"]:
        try:
            with open(path, "w") as f:
                f.write("escaped")
        except OSError as e:
            errors.append("%s: %s" % (path, e.strerror))
    if errors:
        raise PermissionError("; ".join(errors))
