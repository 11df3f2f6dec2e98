"""teg.memory"""
