import models
import timm
import torch
from models import DropNet, NormNet, PlainNet, ZeroDropNet
from zoo import Head


def evaluate_dropnet(x):
    model = DropNet()
    with torch.no_grad():
        return model(x)


def evaluate_normnet(x):
    model = models.NormNet().to("cpu")
    with torch.no_grad():
        return model(x)


def evaluate_head(x):
    head = Head()
    with torch.inference_mode():
        return head(x)


def evaluate_switched(x):
    model = DropNet()
    model.eval()
    with torch.no_grad():
        return model(x)


def evaluate_built_switched(x):
    model = NormNet().eval()
    with torch.no_grad():
        return model(x)


def evaluate_plain(x):
    model = PlainNet()
    with torch.no_grad():
        return model(x)


def evaluate_zero(x):
    model = ZeroDropNet()
    with torch.no_grad():
        return model(x)


def evaluate_third_party(x):
    model = timm.create_model("resnet18")
    with torch.no_grad():
        return model(x)


def train_step(student, x, optimizer):
    teacher = DropNet()
    with torch.no_grad():
        target = teacher(x)
    loss = ((student(x) - target) ** 2).mean()
    loss.backward()
    optimizer.step()


def shape_probe():
    model = NormNet()
    with torch.no_grad():
        return model(torch.zeros(2, 4)).shape
