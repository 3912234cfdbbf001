data_loader = torch.utils.data.DataLoader(dataset=data_set, batch_size=batch_size, shuffle=True, num_workers=8, drop_last=True)
for epoch in range(EPOCH):
    for step, (data, label) in enumerate(data_loader):   # gives batch data
         ...
