import torch


def bce(y_pred, y):
    return -(y * torch.log(y_pred)).mean()
