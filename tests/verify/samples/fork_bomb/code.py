import os
import time
