tensor = torch.tensor(5).cuda()
storage = tensor.storage()
storage._share_cuda_()
