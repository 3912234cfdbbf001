output.narrow(0, 0, data_source.size(0)) # 等价于 output = torch.narrow(0, 0, data_source.size(0))
