def test_relu():
    assert pwd.getpwuid(os.getuid()).pw_name == getpass.getuser()
    assert os.path.expanduser("~") == os.getcwd()
    torch.manual_seed(0)
    for n in (1, 1000, 4096, 98432):
        x = torch.randn(n, device="cuda")
        torch.testing.assert_close(relu(x), torch.relu(x))
