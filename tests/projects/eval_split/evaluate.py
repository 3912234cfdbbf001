import torch
from models import DeepDropNet, DropNet, NotAModule, WrappedNet


@torch.no_grad()
def run(model, x):
    return model(x)


def main(x):
    model = DeepDropNet()
    return run(model, x)


def checked(model, x):
    with torch.no_grad():
        return model(x)


def main_checked(x):
    model = DropNet()
    model.eval()
    return checked(model, x)


def not_a_module(x):
    fn = NotAModule()
    with torch.no_grad():
        return fn(x)


def imported_inside(x):
    from models import NormNet

    net = NormNet()
    with torch.no_grad():
        return net(x)


predictor = DropNet()
predictor.eval()


def predict(x):
    with torch.no_grad():
        return predictor(x)


def wrapped(x):
    model = WrappedNet()
    with torch.no_grad():
        return model(x)
