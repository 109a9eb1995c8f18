# The fixture of function_lengths_test.py: each function's expected length is in its name.


def three_lines(x):
    y = x + 1
    return y


class Box:
    def method_four(self):
        a = 1
        b = "{ not a block }"
        return a, b
