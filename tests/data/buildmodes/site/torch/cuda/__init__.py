"""torch.cuda as a CUDA build of torch has it on a machine without a GPU."""


def _is_compiled() -> bool:
    return True


def is_available() -> bool:
    return False
