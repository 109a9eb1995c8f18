import os
import signal
import time
