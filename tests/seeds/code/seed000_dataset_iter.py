class dataset(Dataset):
    def __init__(self):
        super().__init__()
        self.tensor = torch.tensor(5).cuda()

    def __getitem__(self, index):
        time.sleep(1000)
        return 0

    def __len__(self):
        return 1000

my_set = dataset()
dataloder = DataLoader(my_set, batch_size=10, shuffle=False, num_workers=1)
x = dataloder.__iter__()
print(my_set.tensor)   
