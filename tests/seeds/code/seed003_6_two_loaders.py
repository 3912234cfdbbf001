def main():
        len_source = len(train_source_dataloader)
        len_target = len(train_target_dataloader)
        if len_source > len_target:
            num_iter = len_source
        else:
            num_iter = len_target
    
        end = time.time()
        for batch_idx in range(num_iter):
            if batch_idx % len_source == 0:
                iter_source = iter(train_source_dataloader)    
            if batch_idx % len_target == 0:
                iter_target = iter(train_target_dataloader)
            
            data_source, label_source = iter_source.next()
            data_source, label_source = data_source.cuda(), label_source.cuda()
            data_target, label_target = iter_target.next()
            data_target = data_target.cuda()
