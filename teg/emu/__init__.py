"""teg.emu"""
