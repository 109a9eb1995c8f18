import getpass
import os
import pwd
