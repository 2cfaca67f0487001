module kubevirt.io/virt-template-engine

go 1.26.0
