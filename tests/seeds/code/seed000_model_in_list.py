class dataset(Dataset):
    def __init__(self):
        super().__init__()
        self.tensor = torch.tensor(5).cuda()

    def __getitem__(self, index):
        time.sleep(1000)
        return 0

    def __len__(self):
        return 1000


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
        self.weight = torch.tensor(5).cuda()

arr = []
model = Model()
set = dataset()
dataloder = DataLoader(set, batch_size=1, shuffle=False, num_workers=3)
arr.append(dataloder)
arr.append(model)

x = arr[0].__iter__()
print(model.weight)
