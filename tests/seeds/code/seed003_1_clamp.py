prob = self.softmax(pred.view(-1,self.class_num))
prob.clamp(min=0.0001,max=1.0) # 等价于 prob = torch.clamp(prob,min=0.0001,max=1.0)
