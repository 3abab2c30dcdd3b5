from patchsim.cli.main import main

main()
