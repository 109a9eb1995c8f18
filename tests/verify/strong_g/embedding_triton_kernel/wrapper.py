# the wrapper functions are part of code
