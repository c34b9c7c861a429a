module example.com/planted

go 1.26.0
