def who():
    entry = pwd.getpwuid(os.getuid())
    return entry.pw_name, getpass.getuser(), os.path.expanduser("~"), os.getcwd()
