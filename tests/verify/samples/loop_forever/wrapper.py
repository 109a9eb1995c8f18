def run():
    spin()
