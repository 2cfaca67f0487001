module kubevirt.io/virt-template-api

go 1.26.0
