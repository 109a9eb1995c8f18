class OutOfResources(Exception):
    def __init__(self, required, limit, name):
        super().__init__("out of resource: %s, Required: %d, Hardware limit: %d" % (name, required, limit))


class PTXASError(Exception):
    pass
