arr = []
model = Model()
set = dataset()
dataloder = DataLoader(set, batch_size=1, shuffle=False, num_workers=3)
arr.append(dataloder)
arr.append(model)
x = arr[0].__iter__()
print(model.weight)
