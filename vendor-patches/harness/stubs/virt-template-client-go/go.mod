module kubevirt.io/virt-template-client-go

go 1.26.0
