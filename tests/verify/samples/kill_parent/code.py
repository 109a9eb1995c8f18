import os
import signal
